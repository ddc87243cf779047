"""What a method's params may hold, checked once for every front end.

Identifiers, model references and paths are bounded and free of control characters; no
string anywhere in params may hold a lone UTF-16 surrogate (JSON lets `\\ud800` through,
but it cannot be written to a file or sent to a provider). A violation is -32602 with a
message that names the field and never quotes the offending value.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, Field, StringConstraints, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from ..ai.types import WireModel
from .jsonrpc import clip, clip_message, unpaired_surrogate_at

# Session and approval ids: what tiller hands out (hex), and what a file name can carry.
Identifier = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")]
# "provider/modelId"; ids of local servers hold ':', '/', '.', '@'.
ModelRef = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$")]
ToolName = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]
Uri = Annotated[str, StringConstraints(min_length=1, max_length=8192, pattern=r"^[^\x00-\x1f\x7f]+$")]
# LSP's uinteger.
LineOrColumn = Annotated[int, Field(ge=0, le=2**31 - 1)]


def _absolute(path: str) -> str:
    if not os.path.isabs(path):
        raise PydanticCustomError("absolute_path", "must be an absolute path")
    return path


AbsolutePath = Annotated[
    str,
    StringConstraints(min_length=1, max_length=4096, pattern=r"^[^\x00]+$"),
    AfterValidator(_absolute),
]


class Params(WireModel):
    """The base of every method's params."""

    @model_validator(mode="before")
    @classmethod
    def _no_unpaired_surrogates(cls, data: Any) -> Any:
        where = unpaired_surrogate_at(data)
        if where is not None:
            raise PydanticCustomError("unpaired_surrogate", "{where}: contains a lone UTF-16 surrogate",
                                      {"where": where})
        return data


class InvalidParams(ValueError):
    """Params that do not validate; the message names each bad field."""


P = TypeVar("P", bound=WireModel)


def parse_params(params_type: type[P], params: Any) -> P:
    """`params` validated as `params_type` (absent params are `{}`), or InvalidParams."""
    if params is None or (params == [] and not any(f.is_required() for f in params_type.model_fields.values())):
        # Absent params, or `[]` where nothing is required: Neovim's Lua encodes an empty
        # table as an empty array.
        params = {}
    if not isinstance(params, dict):
        kind = "an array" if isinstance(params, list) else type(params).__name__
        raise InvalidParams(f"Invalid params: expected an object, got {kind}")
    try:
        return params_type.model_validate(params)
    except ValidationError as error:
        raise InvalidParams(clip_message(f"Invalid params: {describe(error)}")) from None


def describe(error: ValidationError) -> str:
    """Each problem as `field.path: message`, without the input values."""
    problems = []
    for issue in error.errors(include_input=False, include_url=False):
        where = ".".join(clip(str(part), 40) for part in issue["loc"])
        problems.append(f"{where}: {issue['msg']}" if where else issue["msg"])
    return "; ".join(problems)
