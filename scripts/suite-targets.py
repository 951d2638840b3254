#!/usr/bin/env python3
"""suite-targets.py DIR SUITE: the ninja targets that the tests of SUITE in
the meson build folder DIR need (what `meson test --suite SUITE` would build
first), one per line, so that a script can build them ahead of the run."""
import json
import os
import subprocess
import sys

build, suite = sys.argv[1], sys.argv[2]


def introspect(what):
    out = subprocess.run(["meson", "introspect", build, what],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


wanted = set()
for test in introspect("--tests"):
    if any(s == suite or s.endswith(":" + suite) for s in test["suite"]):
        wanted.update(test.get("depends", []))
for target in introspect("--targets"):
    if target["id"] in wanted:
        for f in target["filename"]:
            print(os.path.relpath(f, build))
