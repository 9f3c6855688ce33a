#!/usr/bin/env python3
"""tests/slowest.py N FILE.xml...: the N slowest test cases of pytest's JUnit
XML files, slowest first, as `pytest --durations` prints them."""
import sys
import xml.etree.ElementTree as ET


def cases(path):
    for tc in ET.parse(path).getroot().iter("testcase"):
        yield float(tc.get("time", 0)), f"{tc.get('classname')}::{tc.get('name')}"


def main():
    if len(sys.argv) < 3:
        print("usage: slowest.py N FILE.xml...", file=sys.stderr)
        return 64
    n = int(sys.argv[1])
    found = [c for path in sys.argv[2:] for c in cases(path)]
    for secs, name in sorted(found, reverse=True)[:n]:
        print(f"{secs:9.2f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
