#!/usr/bin/env python3
"""check-layers.py [SERVER_DIR] [--stamp FILE]: checks that the files of server/'s layers
include only what their layer may use, and prints the includes that cross
layers.

The layers, lowest first (each folder's README.md says the same):
  store     items, segments, eviction, the memory file: common/ only
  observe   counters, stats groups, latency, hot keys, watch, metrics
  exec      the request, the executors, authentication
  protocol  the front ends (decoders and reply operations)
  net       transports, connections and their batch loop, workers
  (top)     main.c, the option table, server.h: anything
A layer may use the layers below it, with two refinements of the rule the
folders state: the store's internals (cache_internal.h) are the store's
own, and net calls no store function (the connection reads a large value
into the item an executor gives it).

An include that breaks the rule fails the check (exit 1) unless KNOWN
below lists it with what will remove it (none does today), and so does a
listed one that is gone (so the list only shrinks). Exit 0 otherwise, after touching FILE when --stamp names one
(the build runs it so: a wrong include fails the build).
"""
import os
import re
import sys

ORDER = ['store', 'observe', 'exec', 'protocol', 'net', 'top']

# Headers of the top that every layer may read: the settings, which only
# the top writes.
SHARED = {'config.h'}

# Includes across layers that the layering does not allow yet: (file,
# header) -> what removes them. None today: a crossing that has to come
# back, for a while, is listed here with what will remove it.
KNOWN = {}


def layer_files(root):
    """{file name: (layer, path)} for every .c and .h of server/."""
    files = {}
    for dirpath, _, names in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        layer = 'top' if rel == '.' else rel.split(os.sep)[0]
        if layer not in ORDER:
            continue
        for name in names:
            if name.endswith(('.c', '.h')):
                files[name] = (layer, os.path.join(dirpath, name))
    return files


def allowed(src_layer, src, dst_layer, dst):
    if dst in SHARED or src_layer == 'top':
        return True
    if dst == 'cache_internal.h':
        return src_layer == 'store'
    if src_layer == 'net' and dst_layer == 'store':
        return False
    return ORDER.index(dst_layer) <= ORDER.index(src_layer)


def main():
    args = sys.argv[1:]
    stamp = None
    if '--stamp' in args:
        i = args.index('--stamp')
        stamp = args[i + 1]
        del args[i:i + 2]
    root = args[0] if args else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), '..', 'server')
    files = layer_files(root)
    crossing, bad, seen = [], [], set()
    for name, (layer, path) in sorted(files.items()):
        with open(path) as f:
            for inc in re.findall(r'^#include "([^"]+)"', f.read(), re.M):
                dst = os.path.basename(inc)
                if dst not in files:
                    continue
                dst_layer = files[dst][0]
                if dst_layer == layer:
                    continue
                crossing.append(f'{layer}/{name} -> {dst_layer}/{dst}')
                if allowed(layer, name, dst_layer, dst):
                    continue
                if (name, dst) in KNOWN:
                    seen.add((name, dst))
                    continue
                bad.append(f'{layer}/{name} includes {dst_layer}/{dst}')
    gone = sorted(set(KNOWN) - seen)
    if not stamp:
        print(f'{len(crossing)} includes cross layers, {len(seen)} of them '
              f'against the rule (listed in KNOWN)')
    for b in bad:
        print(f'check-layers: not allowed: {b}')
    for name, dst in gone:
        print(f'check-layers: {name} no longer includes {dst}: '
              f'remove it from KNOWN')
    if bad or gone:
        return 1
    if stamp:
        with open(stamp, 'w') as f:
            f.write('ok\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
