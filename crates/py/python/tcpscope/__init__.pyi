import os
from typing import Dict, List, Optional, Sequence, Tuple, Union, overload

import pyarrow

Paths = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]

TABLES: Tuple[str, ...]

class TcpscopeError(Exception): ...

@overload
def read(
    path: Paths,
    tables: str,
    *,
    merge: bool = ...,
    start: Optional[str] = ...,
    duration: Optional[str] = ...,
    end: Optional[str] = ...,
    wscale: Optional[int] = ...,
    idle_split: float = ...,
    shard: Optional[Tuple[int, int]] = ...,
) -> pyarrow.Table: ...
@overload
def read(
    path: Paths,
    tables: Sequence[str] = ...,
    *,
    merge: bool = ...,
    start: Optional[str] = ...,
    duration: Optional[str] = ...,
    end: Optional[str] = ...,
    wscale: Optional[int] = ...,
    idle_split: float = ...,
    shard: Optional[Tuple[int, int]] = ...,
) -> Dict[str, pyarrow.Table]: ...
def screen(
    path: Paths,
    *,
    merge: bool = ...,
    start: Optional[str] = ...,
    duration: Optional[str] = ...,
    end: Optional[str] = ...,
    wscale: Optional[int] = ...,
    idle_split: float = ...,
) -> List[dict]: ...
def columns(table: str) -> List[str]: ...
def schema(table: str) -> pyarrow.Schema: ...
