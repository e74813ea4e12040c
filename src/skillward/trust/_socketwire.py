"""The approval socket's messages: what ``skillward approve`` asks a running gateway, and
what the gateway answers, one JSON object a line, each parsed once where it arrives into a
frozen model (or refused with a UsageError). Pure.

A request is ``pending`` (the questions waiting, those about one ref or all), ``view``
(one question's SKILL.md, fetched and verified by the gateway, for the person only) or
``answer`` (one question, by its id, with the content hash the person was shown). A
reply is the request's own ``op``, or ``error`` with the error's type and message.
"""

from __future__ import annotations

import functools
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from skillward.core.errors import UsageError
from skillward.trust.pending import ApprovalFacts

__all__ = [
    "SOCKET_PREFIX",
    "AnswerReply",
    "AnswerRequest",
    "ErrorReply",
    "ListReply",
    "ListRequest",
    "Reply",
    "Request",
    "ViewReply",
    "ViewRequest",
    "Waiting",
    "encode",
    "parse_reply",
    "parse_request",
]

#: What a gateway's approval socket is named by in the runtime directory
#: (``gateway-PID-RANDOM.sock``).
SOCKET_PREFIX = "gateway"

_Id = Annotated[str, Field(min_length=1, max_length=64)]
_Hash = Annotated[str, Field(max_length=128)]


class _Message(BaseModel):
    # Built on first use, not at import (see skillward.core.wire.WireModel).
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)


class ListRequest(_Message):
    """The questions waiting: those about the skill ``ref`` names, or all."""

    op: Literal["pending"]
    ref: Annotated[str, Field(min_length=1, max_length=2048)] | None = None


class ViewRequest(_Message):
    """One question's SKILL.md, for the person to read before deciding."""

    op: Literal["view"]
    id: _Id


class AnswerRequest(_Message):
    """The person's answer to one question, for the content hash they were shown."""

    op: Literal["answer"]
    id: _Id
    decision: Literal["approve", "deny"]
    scope: Literal["once", "session", "remember"] = "once"
    content_hash: _Hash | None


Request = Annotated[ListRequest | ViewRequest | AnswerRequest, Field(discriminator="op")]


class Waiting(_Message):
    """One question waiting, as ``skillward approve`` shows it."""

    id: str
    ref: str
    content_hash: str | None
    #: Everything the prompt shows (the same facts every prompt renders).
    facts: ApprovalFacts
    #: The name the waiting MCP client reports for itself: unverified.
    client: str | None
    created: float
    expires: float


class ListReply(_Message):
    op: Literal["pending"]
    #: The gateway's name (``serverInfo.name``) and version.
    gateway: str
    version: str
    questions: tuple[Waiting, ...]


class ViewReply(_Message):
    op: Literal["view"]
    skill_md: str


class AnswerReply(_Message):
    op: Literal["answer"]
    decision: Literal["approve", "deny"]
    #: The scope the approval was recorded for (remember may have become session);
    #: None for a denial.
    scope: Literal["once", "session", "remember"] | None
    #: What the gateway did with it, in its words.
    note: str


class ErrorReply(_Message):
    op: Literal["error"]
    #: The error's type (``StaleAnswer``, ``AnswerRefused``, ...).
    error: str
    message: str


Reply = Annotated[ListReply | ViewReply | AnswerReply | ErrorReply, Field(discriminator="op")]


@functools.cache
def _requests() -> TypeAdapter[ListRequest | ViewRequest | AnswerRequest]:
    return TypeAdapter(Request)


@functools.cache
def _replies() -> TypeAdapter[ListReply | ViewReply | AnswerReply | ErrorReply]:
    return TypeAdapter(Reply)


def parse_request(line: bytes) -> ListRequest | ViewRequest | AnswerRequest:
    """One request line; UsageError when it is not one (quoting none of it)."""
    try:
        return _requests().validate_json(line)
    except ValidationError:
        raise UsageError("that is not a request the approval socket takes") from None


def parse_reply(line: bytes) -> ListReply | ViewReply | AnswerReply | ErrorReply:
    """One reply line; UsageError when it is not one (quoting none of it)."""
    try:
        return _replies().validate_json(line)
    except ValidationError:
        raise UsageError("the gateway answered something that is not a reply") from None


def encode(message: _Message) -> bytes:
    """``message`` as one line of JSON (no newline: every one inside a string is escaped)."""
    return message.model_dump_json().encode()
