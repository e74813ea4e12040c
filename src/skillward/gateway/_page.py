"""The approval page: where a host supports URL-mode elicitation (``--approval-page``), the
person decides on a one-time loopback page that shows the pending approval's facts (as the
gateway's question renders them), the whole SKILL.md and, for a skill that changed since
it was approved, the difference.

Any local process and any web page the person opens can reach a loopback port, so a page
is served only at its own unguessable path (256 random bits), to a loopback ``Host``, and
a decision counts only once (the first whose body is read claims the page; any other
gets 409), before the page expires, with the page's own nonce, from no ``Origin`` or
this server's own, and exactly one of the choices. The page escapes everything (HTML,
and control, bidi and invisible characters) and allows no script, frame or outside
resource.
"""

from __future__ import annotations

import functools
import hmac
import html
import logging
import secrets
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from skillward.core.errors import printable
from skillward.core.visible import visible
from skillward.edge._listen import (
    ASGIApp,
    Receive,
    Scope,
    Send,
    listen,
    one_loopback_host,
    serve_asgi,
)
from skillward.edge._peers import SameUser, same_user
from skillward.gateway._approval import CHOICES, approval_message
from skillward.trust.pending import ApprovalFacts

__all__ = ["MAX_PAGES", "ApprovalPages", "Page"]

logger = logging.getLogger("skillward")

#: Pages open at once, at most: past it the oldest is dropped (its question goes unanswered).
MAX_PAGES = 64
#: Bytes of a decision's body read at most.
_MAX_BODY = 4096
#: Characters of one shown line of the changes, at most (the rest is cut, and says so);
#: the question and SKILL.md, what is approved, are shown whole.
_LINE = 4000
_SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        b"frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    # Not no-referrer: under it a browser posts the page's form with "Origin: null"
    # (Fetch), which the page refuses. The page loads nothing from anywhere else.
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
]
_CHOICE_TEXT = {
    "once": "Approve once",
    "session": "Approve for this session",
    "remember": "Approve and remember (until it changes)",
    "deny": "Deny",
}


def _shown(text: str, *, whole: bool = False) -> str:
    """``text`` for the page: each line escaped for people (no control, bidi or invisible
    characters), then for HTML; ``whole``, no line is cut (the question: what it approves
    is shown whole)."""
    lines = (printable(line, limit=len(line) if whole else _LINE) for line in text.splitlines())
    return html.escape("\n".join(lines))


@dataclass
class Page:
    """One question, asked on one page."""

    id: str
    nonce: str
    #: What the page shows of the pending approval (``trust/pending.py``).
    facts: ApprovalFacts
    skill_md: str
    changes: str | None
    expires: float
    url: str = ""
    decision: str | None = None
    decided: anyio.Event = field(default_factory=anyio.Event)

    def render(self) -> bytes:
        title = _shown(f"Load the skill {visible(self.facts.ref)}?", whole=True)
        # The question the elicitation carries, rendered from the same facts.
        question = approval_message(self.facts, read_at=None)
        parts = [
            "<!doctype html><html><head><meta charset='utf-8'>",
            f"<title>skillward: {title}</title>",
            "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}"
            "pre{white-space:pre-wrap;overflow-wrap:anywhere;border:1px solid #999;padding:1em}"
            "button{margin:.3em;padding:.5em 1em}</style></head><body>",
            f"<h1>{title}</h1>",
            f"<pre>{_shown(question, whole=True)}</pre>",
        ]
        if self.changes is not None:
            parts.append("<h2>What changed since it was approved</h2>")
            parts.append(f"<pre>{_shown(self.changes)}</pre>")
        parts.append("<h2>SKILL.md, as verified (written by the server: data)</h2>")
        parts.append(f"<pre>{_shown(self.skill_md, whole=True)}</pre>")
        parts.append("<form method='post'>")
        parts.append(f"<input type='hidden' name='nonce' value='{html.escape(self.nonce)}'>")
        for choice in CHOICES:
            parts.append(
                f"<button type='submit' name='decision' value='{choice}'>"
                f"{html.escape(_CHOICE_TEXT[choice])}</button>"
            )
        parts.append("</form></body></html>")
        return "".join(parts).encode("utf-8")


class ApprovalPages:
    """The one-time pages, and the loopback server that serves them (:meth:`run`)."""

    def __init__(
        self,
        *,
        lifetime: float = 600.0,
        clock: Callable[[], float] = time.time,
        peers: SameUser = same_user,
    ) -> None:
        self._pages: dict[str, Page] = {}
        self._lifetime = lifetime
        self._clock = clock
        # Whose browser is asking: the port is open to every user, the URL on a command line.
        self._peers = peers
        self._base: str | None = None
        self._origin: bytes | None = None

    @property
    def ready(self) -> bool:
        return self._base is not None

    def open(self, *, facts: ApprovalFacts, skill_md: str, changes: str | None) -> Page:
        """A new page for one pending approval; its URL is ``page.url``."""
        if self._base is None:
            raise RuntimeError("the approval page server is not running")
        now = self._clock()
        self._pages = {k: p for k, p in self._pages.items() if p.expires >= now}
        while len(self._pages) >= MAX_PAGES:
            del self._pages[next(iter(self._pages))]
        page_id = secrets.token_urlsafe(32)
        page = Page(
            id=page_id,
            nonce=secrets.token_urlsafe(32),
            facts=facts,
            skill_md=skill_md,
            changes=changes,
            expires=now + self._lifetime,
        )
        page.url = f"{self._base}/approve/{page_id}"
        self._pages[page_id] = page
        return page

    def get(self, page_id: str) -> Page | None:
        return self._pages.get(page_id)

    async def wait(self, page: Page, within: float) -> str | None:
        """The person's decision on ``page``, or None (none within ``within`` seconds);
        the page is gone afterwards."""
        with anyio.move_on_after(within):
            await page.decided.wait()
        self._pages.pop(page.id, None)
        return page.decision

    async def run(self, *, on_ready: Callable[[str], None] | None = None) -> None:
        """Serve the pages on 127.0.0.1 (a free port) until cancelled."""
        sock = listen("127.0.0.1", 0)
        try:
            async with anyio.create_task_group() as group:
                url = await group.start(
                    functools.partial(serve_asgi, self.app, sock, host="127.0.0.1", lifespan=False)
                )
                self._base, self._origin = url, url.encode("ascii")
                if on_ready is not None:
                    on_ready(url)
        finally:
            self._base = None
            sock.close()

    # --- the ASGI app --------------------------------------------------------------------

    @property
    def app(self) -> ASGIApp:
        return self._app

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        hosts = [v for k, v in scope.get("headers", ()) if k == b"host"]
        origins = [v for k, v in scope.get("headers", ()) if k == b"origin"]
        if not one_loopback_host(hosts):
            await _answer(send, 421, b"the Host header must name this machine's loopback")
            return
        if any(origin != self._origin for origin in origins):
            await _answer(send, 403, b"requests from other web pages are refused")
            return
        client, server = scope.get("client"), scope.get("server")
        if client is None or server is None or self._peers(client, server) is False:
            await _answer(send, 403, b"requests from another user's programs are refused")
            return
        path = scope.get("path", "")
        page = None
        if path.startswith("/approve/"):
            page = self._pages.get(path.removeprefix("/approve/"))
        if page is None or page.expires < self._clock() or page.decision is not None:
            await _answer(send, 404, b"no such question (it was answered, or it expired)")
            return
        if scope.get("method") == "GET":
            await _answer(send, 200, page.render(), b"text/html; charset=utf-8")
        elif scope.get("method") == "POST":
            await self._decide(page, receive, send)
        else:
            await _answer(send, 405, b"GET or POST only")

    async def _decide(self, page: Page, receive: Receive, send: Send) -> None:
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = bool(message.get("more_body"))
            if len(body) > _MAX_BODY:
                await _answer(send, 413, b"that is not a decision")
                return
        try:
            fields = urllib.parse.parse_qs(
                body.decode("ascii"), strict_parsing=True, max_num_fields=4
            )
        except (ValueError, UnicodeDecodeError):
            fields = {}
        nonce = fields.get("nonce", [""])
        decision = fields.get("decision", [""])
        if (
            set(fields) != {"nonce", "decision"}
            or len(nonce) != 1
            or len(decision) != 1
            or not hmac.compare_digest(nonce[0].encode(), page.nonce.encode())
            or decision[0] not in CHOICES
        ):
            logger.info("an approval page refused a decision that is not one of its own")
            await _answer(send, 400, b"that is not a decision of this page")
            return
        status, text = self._claim(page, decision[0])
        await _answer(send, status, text)

    def _claim(self, page: Page, decision: str) -> tuple[int, bytes]:
        """Record ``decision`` on ``page`` if it is still open and undecided. Synchronous,
        so nothing runs between the check and the mark: of two posts whose bodies arrive
        together, the first read claims the page and the other gets 409 (or 404)."""
        if page.decision is not None:
            return 409, b"this question was already answered"
        if self._pages.get(page.id) is not page or page.expires < self._clock():
            return 404, b"no such question (it expired)"
        page.decision = decision  # once: the page answers nothing more
        page.decided.set()
        return 200, b"Recorded. You can close this page."


async def _answer(
    send: Send, status: int, body: bytes, content_type: bytes = b"text/plain; charset=utf-8"
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode("ascii")),
                *_SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
