#!/bin/sh
# lase with glibc's mmap use turned off (large blocks stay in the heap for reuse): the
# AFTER side of malloc_ab.sh.
exec env GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296 \
  "$(dirname "$0")/../../../runs/bin/lase" "$@"
