import os
from typing import Dict, List, Optional, Sequence, Tuple, TypedDict, Union, overload

from typing_extensions import Unpack

import pyarrow

Paths = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]

TABLES: Tuple[str, ...]
PLOT_KINDS: Tuple[str, ...]

class TcpscopeError(Exception): ...

class Options(TypedDict, total=False):
    merge: bool
    start: Optional[str]
    duration: Optional[str]
    end: Optional[str]
    wscale: Optional[int]
    idle_split: float
    checksums: bool
    conns: Sequence[int]

@overload
def read(
    path: Paths,
    tables: str,
    *,
    shard: Optional[Tuple[int, int]] = ...,
    **options: Unpack[Options],
) -> pyarrow.Table: ...
@overload
def read(
    path: Paths,
    tables: Sequence[str] = ...,
    *,
    shard: Optional[Tuple[int, int]] = ...,
    **options: Unpack[Options],
) -> Dict[str, pyarrow.Table]: ...
def screen(path: Paths, **options: Unpack[Options]) -> List[dict]: ...

class Plot:
    data: bytes
    format: str
    def __init__(self, data: bytes, format: str) -> None: ...
    def __bytes__(self) -> bytes: ...
    def _repr_svg_(self) -> Optional[str]: ...
    def _repr_png_(self) -> Optional[bytes]: ...
    def save(self, path: Union[str, os.PathLike]) -> None: ...

def plot(
    path: Union[str, os.PathLike],
    conn: int,
    kind: str = ...,
    *,
    dir: Optional[str] = ...,
    start: Union[str, float, None] = ...,
    end: Union[str, float, None] = ...,
    seq_from: Optional[int] = ...,
    seq_to: Optional[int] = ...,
    abs_seq: bool = ...,
    width: int = ...,
    height: int = ...,
    title: Optional[str] = ...,
    wscale: Optional[int] = ...,
    window: Optional[float] = ...,
    format: str = ...,
) -> Plot: ...
def series(
    path: Union[str, os.PathLike],
    conn: int,
    kind: str = ...,
    *,
    dir: Optional[str] = ...,
    start: Union[str, float, None] = ...,
    end: Union[str, float, None] = ...,
    wscale: Optional[int] = ...,
    window: Optional[float] = ...,
) -> Dict[str, pyarrow.Table]: ...
def columns(table: str) -> List[str]: ...
def schema(table: str) -> pyarrow.Schema: ...
