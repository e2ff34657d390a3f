#!/usr/bin/env bash
# Seeds the fuzz corpora from real captures:
#   - the project's tests/data/*.pcap* (if any) and ../shared/traces/public/* (next to the repo);
#   - files over 64 KiB are cut to their first 64 KiB (a cut-off last record is a case too);
#   - capture_reader, pipeline and export get the files as they are, plus gzip and zstd copies of the
#     small ones (the compressed readers are part of the input space);
#   - decode gets single frames pulled out of the same files: link type (u32 LE), wire length
#     (u32 LE), then the captured bytes, as fuzz_targets/decode.rs expects.
# Corpus directories are gitignored. Usage: fuzz/seed.sh  (from anywhere)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
max=65536
frames_per_file=${FRAMES_PER_FILE:-40}

mkdir -p "$here/corpus/capture_reader" "$here/corpus/pipeline" "$here/corpus/decode" "$here/corpus/export"
shopt -s nullglob
files=("$root"/tests/data/*.pcap "$root"/tests/data/*.pcapng "$root"/tests/data/*.pcap.gz \
       "$root"/tests/data/*.pcap.zst "$root"/../shared/traces/public/*.pcap \
       "$root"/../shared/traces/public/*.pcapng)
if [ ${#files[@]} -eq 0 ]; then
    echo "seed.sh: no capture files found" >&2
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "${files[@]}"; do
    name=$(basename "$f")
    head -c "$max" "$f" > "$tmp/$name"
    for t in capture_reader pipeline export; do
        cp "$tmp/$name" "$here/corpus/$t/$name"
    done
    if [ "$(stat -c %s "$tmp/$name")" -le 16384 ]; then
        for t in capture_reader pipeline export; do
            gzip -9 -n -c "$tmp/$name" > "$here/corpus/$t/$name.gz"
            if command -v zstd > /dev/null; then
                zstd -q -19 -c "$tmp/$name" > "$here/corpus/$t/$name.zst"
            fi
        done
    fi
done

python3 - "$here/corpus/decode" "$frames_per_file" "${files[@]}" <<'PY'
import struct, sys, os
out, per_file, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def pcap_frames(b):
    magic = b[:4]
    order = {b'\xd4\xc3\xb2\xa1': '<', b'\x4d\x3c\xb2\xa1': '<', b'\x34\xcd\xb2\xa1': '<',
             b'\xa1\xb2\xc3\xd4': '>', b'\xa1\xb2\x3c\x4d': '>', b'\xa1\xb2\xcd\x34': '>'}[magic]
    rec_hdr = 24 if magic in (b'\x34\xcd\xb2\xa1', b'\xa1\xb2\xcd\x34') else 16
    lt = struct.unpack(order + 'I', b[20:24])[0] & 0xffff
    at = 24
    while at + rec_hdr <= len(b):
        _, _, incl, orig = struct.unpack(order + 'IIII', b[at:at + 16])
        data = b[at + rec_hdr:at + rec_hdr + incl]
        if len(data) < incl:
            return
        yield lt, orig, data
        at += rec_hdr + incl

def pcapng_frames(b):
    at, order, ifaces = 0, '<', []
    while at + 12 <= len(b):
        if b[at:at + 4] == b'\x0a\x0d\x0d\x0a':
            order = '<' if b[at + 8:at + 12] == b'\x4d\x3c\x2b\x1a' else '>'
            ifaces = []
        btype, blen = struct.unpack(order + 'II', b[at:at + 8])
        if blen < 12 or at + blen > len(b):
            return
        body = b[at + 8:at + blen - 4]
        if btype == 1:
            ifaces.append(struct.unpack(order + 'H', body[:2])[0])
        elif btype == 6 and len(body) >= 20:
            if_id, _, _, cap, orig = struct.unpack(order + 'IIIII', body[:20])
            if if_id < len(ifaces):
                yield ifaces[if_id], orig, body[20:20 + cap]
        elif btype == 3 and ifaces and len(body) >= 4:
            orig = struct.unpack(order + 'I', body[:4])[0]
            yield ifaces[0], orig, body[4:4 + orig]
        at += blen

n = 0
for p in paths:
    with open(p, 'rb') as f:
        b = f.read()
    gen = pcapng_frames(b) if b[:4] == b'\x0a\x0d\x0d\x0a' else pcap_frames(b)
    try:
        for i, (lt, orig, data) in enumerate(gen):
            if i >= per_file:
                break
            with open(os.path.join(out, '%s-%03d' % (os.path.basename(p), i)), 'wb') as f:
                f.write(struct.pack('<II', lt, orig) + data)
            n += 1
    except (KeyError, struct.error):
        pass
print('decode: %d frames' % n, file=sys.stderr)
PY
for t in capture_reader decode pipeline; do
    echo "corpus/$t: $(ls "$here/corpus/$t" | wc -l) files, $(du -sh "$here/corpus/$t" | cut -f1)"
done
