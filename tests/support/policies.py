"""Policy layers on disk for tests: an administrator directory made safe the way root
would make it (owned by the test's user, passed in as the owner), and a user file."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillward.edge.servers import HttpTransport, ServerSpec, StdioTransport
from skillward.trust._policyload import load_policy
from skillward.trust.policy import EffectivePolicy


@dataclass
class PolicyDirs:
    """``admin/`` (``policy.toml`` and ``policy.d/``) and a user ``policy.toml`` under ``root``."""

    root: Path
    reports: list[str] = field(default_factory=list)

    @property
    def admin_dir(self) -> Path:
        return self.root / "admin"

    @property
    def user_file(self) -> Path:
        return self.root / "user" / "policy.toml"

    def admin(self, text: str, drop_in: str | None = None) -> Path:
        """Write the administrator's ``policy.toml``, or the drop-in named ``drop_in``."""
        directory = self.admin_dir if drop_in is None else self.admin_dir / "policy.d"
        directory.mkdir(parents=True, exist_ok=True)
        self.admin_dir.chmod(0o755)
        directory.chmod(0o755)
        path = directory / (drop_in or "policy.toml")
        path.write_text(text, encoding="utf-8")
        path.chmod(0o644)
        return path

    def user(self, text: str) -> Path:
        self.user_file.parent.mkdir(parents=True, exist_ok=True)
        self.user_file.write_text(text, encoding="utf-8")
        return self.user_file

    def load(
        self,
        *,
        host: Mapping[str, Any] | None = None,
        headless: bool = False,
        owner: int | None = None,
    ) -> EffectivePolicy:
        return load_policy(
            admin_dir=self.admin_dir,
            admin_owner=os.getuid() if owner is None else owner,
            user_file=self.user_file,
            host=host,
            headless=headless,
            report=self.reports.append,
        )


def http_server(label: str, url: str = "https://skills.example.com/mcp") -> ServerSpec:
    return ServerSpec(label=label, transport=HttpTransport(url=url))


def stdio_server(label: str, command: str, *args: str) -> ServerSpec:
    return ServerSpec(label=label, transport=StdioTransport(command=command, args=args))


#: The URL the admin guide's allow lists name.
ALLOWED = "https://skills.example.com/mcp"


def url_named_executable(directory: Path, started: Path) -> Path:
    """A working stdio server at the relative path ``https:/skills.example.com/mcp`` under
    ``directory`` (as a cloned repository can hold one), that leaves ``started`` behind."""
    script = directory / "https:" / "skills.example.com" / "mcp"
    script.parent.mkdir(parents=True)
    script.write_text(
        f"#!{sys.executable}\nimport os, sys\nopen({str(started)!r}, 'w').close()\n"
        "os.execv(sys.executable, [sys.executable, '-m', 'skillward', 'serve'])\n"
    )
    script.chmod(0o755)
    return script
