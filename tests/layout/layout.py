#!/usr/bin/env python3
"""The house rules of the source tree (README.md, "Layout"), checked on
the tree and on the objects `make all` built:

- no two headers share a file name;
- a folder of user/ is entered through one header, named after it (none
  for user/record, reached through the command table); its other headers
  are included only inside it, and lib/convert's internal header only
  inside lib/convert;
- no folder of user/ or lib/ holds more than 15 files;
- calls run one way: no two files of user/ or lib/ reach each other
  through calls (no cycle in the graph of which object calls a function
  another defines), and the folders of user/ call one way too;
- lib/ never calls libbpf;
- every citation of a document's section (`docs/output.md, "Filters"`)
  names a document of docs/ and a heading, run-in heading or labelled
  item of it.

Run from the top of the tree after `make all`; ends with `N passed, N
failed`. Each check prints what breaks it."""
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("OUT", os.path.join(ROOT, "build"))
MAX_FILES = 15
SKIP_DIRS = {".git", "build", "node_modules", "vmlinux"}


def tracked():
    """Files of the tree (git's list when there is one)."""
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout
        return [f for f in out.split() if os.path.exists(os.path.join(ROOT, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, subdirs, names in os.walk(ROOT):
            subdirs[:] = [s for s in subdirs if s not in SKIP_DIRS]
            files += [os.path.relpath(os.path.join(d, n), ROOT) for n in names]
        return files


FILES = tracked()


def sources(top):
    return sorted(f for f in FILES if f.startswith(top + "/") and f.endswith(".c"))


def symbols(obj):
    """(defined, undefined) global names of an object file."""
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TDBRC":
            defined.add(p[2])
        elif len(p) == 2 and p[0] == "U":
            undefined.add(p[1])
    return defined, undefined


def call_graph():
    """file -> {files it calls}, and file -> undefined names, for every
    source of user/ and lib/ (each from its object in build/)."""
    defs, undef, missing = {}, {}, []
    for src in sources("user") + sources("lib"):
        obj = os.path.join(BUILD, src[:-2] + ".o")
        if not os.path.exists(obj):
            missing.append(obj)
            continue
        d, u = symbols(obj)
        for name in d:
            defs[name] = src
        undef[src] = u
    if missing:
        raise SystemExit(f"layout: no object for {missing[:3]}...: run make all first")
    graph = {f: {defs[n] for n in u if n in defs and defs[n] != f} for f, u in undef.items()}
    return graph, undef


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def check_header_names():
    seen = collections.defaultdict(list)
    for f in FILES:
        if f.endswith(".h") and not f.startswith("tests/consumers/"):
            seen[os.path.basename(f)].append(f)
    return [f"{name}: {' '.join(paths)}" for name, paths in sorted(seen.items())
            if len(paths) > 1]


def user_folders():
    return sorted({f.split("/")[1] for f in FILES
                   if f.startswith("user/") and f.count("/") == 2})


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def check_interfaces():
    """Headers of a folder included from outside it: only its own, named
    after it; lib/convert/convert_int.h only inside lib/convert."""
    bad = []
    folders = set(user_folders())
    for f in FILES:
        if not (f.startswith("user/") or f.startswith("lib/")) or not f.endswith((".c", ".h")):
            continue
        text = open(os.path.join(ROOT, f), errors="replace").read()
        for inc in INCLUDE.findall(text):
            parts = inc.split("/")
            if len(parts) == 2 and parts[0] in folders and f.startswith("user/"):
                inside = f.startswith(f"user/{parts[0]}/")
                if not inside and parts[1] != parts[0] + ".h":
                    bad.append(f"{f} includes {inc}, inside user/{parts[0]}/")
            if os.path.basename(inc) == "convert_int.h" and not f.startswith("lib/convert/"):
                bad.append(f"{f} includes {inc}, inside lib/convert/")
    return bad


def check_folder_sizes():
    count = collections.Counter(os.path.dirname(f) for f in FILES
                                if f.startswith(("user/", "lib/")))
    return [f"{d}: {n} files" for d, n in sorted(count.items()) if n > MAX_FILES]


def check_file_cycles(graph):
    return [" <-> ".join(c) for c in cycles(graph)]


def check_folder_cycles(graph):
    """The folders of user/ (user/main.c on its own) as one graph."""
    def folder(f):
        return os.path.dirname(f) if f.count("/") >= 2 else f
    g = collections.defaultdict(set)
    for f, calls in graph.items():
        if f.startswith("user/"):
            g[folder(f)] |= {folder(c) for c in calls if c.startswith("user/")} - {folder(f)}
    return [" <-> ".join(c) for c in cycles(g)]


def check_lib_without_libbpf(undef):
    return [f"{f} calls {n}" for f, names in sorted(undef.items()) if f.startswith("lib/")
            for n in sorted(names) if n.startswith(("bpf_", "libbpf_", "bpf_object__",
                                                     "ring_buffer__"))]


CITE = re.compile(r'((?:docs/)?[\w.-]+\.md),?\s+"([^"]+)"')


def doc_headings(path):
    """A document's headings, run-in headings (`*Staging.*`) and labelled
    items (`* Filters:`)."""
    text = open(path).read()
    heads = {re.sub(r"^#+\s*", "", line).strip() for line in text.splitlines()
             if line.startswith("#")}
    heads |= set(re.findall(r"(?m)^\s*(?:[*-]\s+)?\*{1,2}([^*\n]+?)[.:]\*{1,2}", text))
    heads |= set(re.findall(r"(?m)^\s*[*-]\s+([A-Z][\w ]+):", text))
    return heads


def check_citations():
    docs = {f: doc_headings(os.path.join(ROOT, "docs", f))
            for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")}
    bad = []
    for f in FILES:
        if not re.search(r"\.(c|h|py|sh|md)$|Makefile$", f) or "node_modules" in f:
            continue
        text = open(os.path.join(ROOT, f), errors="replace").read()
        flat = re.sub(r"\n\s*(?:\*|#|//)?\s*", " ", text)   # comments joined
        for m in CITE.finditer(flat):
            path, heading = m.group(1), m.group(2)
            doc = os.path.basename(path)
            if path.startswith("docs/") and doc not in docs:
                bad.append(f"{f}: {path} is not in docs/")
            elif doc in docs and not any(h == heading or h.startswith(heading)
                                         for h in docs[doc]):
                bad.append(f'{f}: {doc} has no section "{heading}"')
    return bad


def main():
    os.chdir(ROOT)
    graph, undef = call_graph()
    checks = [
        ("no two headers share a file name", check_header_names),
        ("a folder of user/ is entered through its own header", check_interfaces),
        (f"no folder holds more than {MAX_FILES} files", check_folder_sizes),
        ("no two files call each other, even through others",
         lambda: check_file_cycles(graph)),
        ("the folders of user/ call one way", lambda: check_folder_cycles(graph)),
        ("lib/ never calls libbpf", lambda: check_lib_without_libbpf(undef)),
        ("every cited section exists", check_citations),
    ]
    passed = failed = 0
    for name, check in checks:
        bad = check()
        print(("ok     " if not bad else "FAILED ") + name)
        for line in bad:
            print("    " + line)
        passed += not bad
        failed += bool(bad)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
