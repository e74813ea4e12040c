"""Signed approval tokens: a question put to a person, carried across requests.

A host that asks in one request and takes the answer in a later one (the gateway's
2026-07-28 ``request_state``; a web backend whose person answers in another request,
perhaps on another replica) hands out a token when it asks and takes the answer only
with it. :class:`ApprovalTokens` signs a token with HMAC-SHA256 under a key it is given
(or one made for this process), binding who waits (an opaque key: the client session,
the web session), the qualified ref, the content hash the person was shown, the scopes
they were offered, an expiry and a nonce. :meth:`ApprovalTokens.verify` accepts it only
for exactly that question, unexpired, and once: the nonce is claimed in a
:class:`NonceStore`.

Once means once per nonce store. The default, :class:`MemoryNonces`, is this process's:
replicas that share the key but not a nonce store each accept a token once, so across
them a token can be replayed until it expires. A host with several replicas passes a
nonce store they share (a unique row in its database, a Redis ``SET NX`` with the
expiry) to make it once everywhere.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from skillward.core.errors import ConfigError, InvalidApprovalToken, StaleAnswer
from skillward.trust.approvals import Scope
from skillward.trust.pending import PendingApproval

__all__ = ["ApprovalTokens", "MemoryNonces", "NonceStore", "TokenClaims"]

#: Characters of a token read at most: anything longer is refused unread.
MAX_TOKEN = 4096
#: Bytes of key at least.
MIN_KEY = 32


class NonceStore(Protocol):
    """Where the nonces of accepted tokens are kept, so that each is accepted once."""

    def claim(self, nonce: str, expires: float) -> bool:
        """Claim ``nonce`` (kept at least until ``expires``, seconds since the epoch):
        True the first time, False ever after. Atomic: of two claims at once, one wins."""
        ...


class MemoryNonces:
    """The nonces this process accepted, each kept until its token expires."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._used: dict[str, float] = {}
        self._lock = threading.Lock()

    def claim(self, nonce: str, expires: float) -> bool:
        """True the first time ``nonce`` is claimed in this process, False after."""
        with self._lock:
            now = self._clock()
            self._used = {n: e for n, e in self._used.items() if e >= now}
            if nonce in self._used:
                return False
            self._used[nonce] = expires
            return True


@dataclass(frozen=True, slots=True)
class TokenClaims:
    """What a verified token says."""

    #: Who waits for the answer (the client session, the web session): opaque.
    waiter: str
    #: The qualified ref of the skill asked about.
    ref: str
    #: The content hash the person was shown (None for a dynamic or local skill).
    content_hash: str | None
    #: The scopes the person was offered.
    scopes: tuple[Scope, ...]
    #: Seconds since the epoch after which it is refused.
    expires: float
    nonce: str
    #: What the issuer attached (the gateway: its approval page's id).
    extra: str


#: Every scope, as the gateway's form offers them.
ALL_SCOPES = (Scope.ONCE, Scope.SESSION, Scope.REMEMBER)


class ApprovalTokens:
    """Signs and verifies approval tokens.

    ``key``: the HMAC key (at least 32 bytes), or a function returning it (called at
    each use, so a host can rotate it); None makes one for this process, so only this
    process verifies what it signed. Replicas that resume each other's tokens share the
    key, and a ``nonces`` store to accept each token once across them (see the module's
    note). ``lifetime``: seconds a token is valid.
    """

    def __init__(
        self,
        key: bytes | Callable[[], bytes] | None = None,
        *,
        lifetime: float = 600.0,
        clock: Callable[[], float] = time.time,
        nonces: NonceStore | None = None,
    ) -> None:
        made = secrets.token_bytes(MIN_KEY) if key is None else key
        self._key: Callable[[], bytes] = made if callable(made) else (lambda: made)
        self._check_key(self._key())
        self.lifetime = lifetime
        self._clock = clock
        self.nonces: NonceStore = nonces if nonces is not None else MemoryNonces(clock=clock)

    @staticmethod
    def _check_key(key: object) -> bytes:
        if not isinstance(key, bytes) or len(key) < MIN_KEY:
            raise ConfigError(f"an approval token key must be at least {MIN_KEY} bytes")
        return key

    def _mac(self, payload: bytes) -> str:
        key = self._check_key(self._key())
        return hmac.new(key, payload, hashlib.sha256).hexdigest()

    def sign(
        self,
        *,
        waiter: str,
        ref: str,
        content_hash: str | None,
        scopes: Sequence[Scope] = ALL_SCOPES,
        extra: str = "",
    ) -> str:
        """A token for one question: ``waiter`` waits on ``ref`` as its content hash
        ``content_hash`` describes it, offered ``scopes``."""
        state = {
            "w": waiter,
            "r": ref,
            "h": content_hash,
            "s": [scope.value for scope in scopes],
            "e": self._clock() + self.lifetime,
            "n": secrets.token_hex(16),
            "x": extra,
        }
        payload = json.dumps(state, sort_keys=True, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(payload).decode("ascii") + "." + self._mac(payload)

    def issue(self, pending: PendingApproval, *, waiter: str = "", extra: str = "") -> str:
        """A token for the question ``pending`` puts: its ref, content hash and scopes."""
        facts = pending.facts
        return self.sign(
            waiter=waiter,
            ref=facts.ref,
            content_hash=pending.content_hash,
            scopes=facts.scopes,
            extra=extra,
        )

    def verify(
        self, token: object, *, waiter: str, ref: str, content_hash: str | None
    ) -> TokenClaims:
        """Accept ``token`` once, for exactly this question, and return what it says.

        Raise :class:`~skillward.core.errors.InvalidApprovalToken` when it is malformed,
        not signed with this key, expired, used before, or issued for another waiter or
        skill; :class:`~skillward.core.errors.StaleAnswer` when it was issued for other
        content (the skill changed between the question and the answer).
        """
        claims = self._read(token)
        if claims.expires < self._clock():
            raise InvalidApprovalToken("the approval token expired; ask again")
        if claims.waiter != waiter:
            raise InvalidApprovalToken("the approval token was issued for another session")
        if claims.ref != ref:
            raise InvalidApprovalToken("the approval token was issued for another skill")
        if claims.content_hash != content_hash:
            raise StaleAnswer(
                "the skill changed between the question and the answer; nothing was approved"
            )
        if not self.nonces.claim(claims.nonce, claims.expires):
            raise InvalidApprovalToken("the approval token was already used")
        return claims

    def _read(self, token: object) -> TokenClaims:
        """What a token this key signed says; its expiry and binding are not checked."""
        if not isinstance(token, str) or len(token) > MAX_TOKEN or token.count(".") != 1:
            raise InvalidApprovalToken("the approval token is missing or malformed")
        encoded, mac = token.split(".")
        try:
            payload = base64.urlsafe_b64decode(encoded.encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            raise InvalidApprovalToken("the approval token is malformed") from None
        # Bytes, not str: compare_digest refuses non-ASCII text, and the token is untrusted.
        if not hmac.compare_digest(self._mac(payload).encode(), mac.encode("utf-8", "replace")):
            raise InvalidApprovalToken(
                "the approval token was not signed with this key (forged, altered, or "
                "issued by a process that does not share the key)"
            )
        # Signed by this key, so written by sign(): its shape is known.
        data = json.loads(payload)
        return TokenClaims(
            waiter=data["w"],
            ref=data["r"],
            content_hash=data["h"],
            scopes=tuple(Scope(value) for value in data["s"]),
            expires=float(data["e"]),
            nonce=data["n"],
            extra=data["x"],
        )
