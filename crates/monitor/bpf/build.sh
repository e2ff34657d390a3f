#!/bin/sh
# Rebuilds tcp_iter.bpf.o, the BPF sampler's program (docs/monitor.md, "The BPF sampler"):
#
#   crates/monitor/bpf/build.sh [OUT]        (default: tcp_iter.bpf.o beside this script)
#
# Needs clang-14, llvm-14 (llvm-strip-14) and libbpf-dev (bpf/bpf_helpers.h), as Debian 12 ships
# them (`make bpf-deps` installs them). Run from anywhere: it compiles from this directory with
# its path mapped to `.` (clang writes the source's absolute path into .BTF.ext's line info
# otherwise) and strips the DWARF sections (keeping .BTF and .BTF.ext, which the loader's CO-RE
# relocation needs), so the object does not depend on where the tree is; the test
# `bpf_object_is_reproducible` rebuilds it and compares the bytes.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/tcp_iter.bpf.o}
tmp=$(mktemp "${TMPDIR:-/tmp}/tcpscope-bpf.XXXXXX.o")
trap 'rm -f "$tmp"' EXIT
(cd "$here" && clang-14 -O2 -g -target bpf -D__TARGET_ARCH_x86 -Wall -Werror -fdebug-prefix-map="$here"=. \
    -c tcp_iter.bpf.c -o "$tmp")
llvm-strip-14 --strip-debug "$tmp"
cp "$tmp" "$out"
