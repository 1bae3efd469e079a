#!/usr/bin/env python3
"""Checks that every include of Rill's layered code stays inside what its layer declares.

A layer (cmake/layers.cmake) is a folder of the tree built as one target. It may
include its own files, the files of the layers it declares as dependencies
(directly or through them), the external packages it declares, and the C++ and
system headers. Anything else is an error that names the file, the line, the
include and the layer it would reach. Public headers (<layer>/include/rill/)
must form a closed facade: they include only other public headers, protobuf's
generated program header, and standard headers; never CAF, Boost or an
internal path.

Usage: check_layers.py LAYERS_JSON SOURCE_ROOT [--stamp FILE]
LAYERS_JSON (written by CMake) lists each layer's name, folder, dependencies and
external packages. Exit status 1 with one line per violation.
"""
import json
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')

# External packages by the first part of the include path (or the whole name).
EXTERNAL = {
    'caf': 'CAF', 'boost': 'Boost', 'google': 'Protobuf', 'gloo': 'Gloo', 'tbb': 'TBB',
    'oneapi': 'TBB', 'cub': 'CUDA', 'thrust': 'CUDA', 'cuda_runtime.h': 'CUDA', 'cuda.h': 'CUDA',
    'cuda_runtime_api.h': 'CUDA', 'cublas_v2.h': 'CUDA', 'curand.h': 'CUDA', 'nccl.h': 'CUDA',
    'cuda_fp16.h': 'CUDA', 'cblas.h': 'OpenBLAS', 'zlib.h': 'ZLIB', 'openssl': 'OpenSSL', 'pybind11': 'pybind11',
    'nlohmann': 'nlohmann_json', 'CLI': 'CLI11', 'gtest': 'GTest', 'gmock': 'GTest',
}
SOURCE_SUFFIXES = ('.h', '.cc', '.cu', '.cuh')


def external_package(path):
    first = path.split('/')[0]
    return EXTERNAL.get(first) or EXTERNAL.get(path)


class Layers:
    def __init__(self, table, root):
        self.root = root
        self.by_name = {layer['name']: layer for layer in table}
        # Longest folder first, so a nested layer wins over its parent folder.
        self.by_dir = sorted(table, key=lambda layer: -len(layer['dir']))
        self.public = {}  # "rill/x.h" -> layer name
        for layer in table:
            inc = os.path.join(root, layer['dir'], 'include', 'rill')
            if os.path.isdir(inc):
                for name in os.listdir(inc):
                    self.public['rill/' + name] = layer['name']

    def owner(self, path):
        """The layer whose folder holds `path` (relative to the root), or None."""
        for layer in self.by_dir:
            if path == layer['dir'] or path.startswith(layer['dir'] + '/'):
                return layer['name']
        return None

    def reachable(self, name):
        seen, stack = set(), [name]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            stack.extend(self.by_name[n]['deps'])
        return seen

    def cycle(self):
        state = {}

        def visit(n, path):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if state.get(n) == 2:
                return None
            state[n] = 1
            for d in self.by_name[n]['deps']:
                found = visit(d, path + [n])
                if found:
                    return found
            state[n] = 2
            return None

        for n in self.by_name:
            found = visit(n, [])
            if found:
                return found
        return None

    def resolve(self, include, quoted):
        """(kind, what) of an include: ('layer', name), ('external', package), ('outside', path) or ('system', None)."""
        if include.startswith('rill/proto/'):
            return 'layer', 'rill_proto'
        if include == 'rill/version.h':
            return 'layer', 'rill_base'
        if include in self.public:
            return 'layer', self.public[include]
        package = external_package(include)
        if package:
            return 'external', package
        if quoted and os.path.exists(os.path.join(self.root, include)):
            owner = self.owner(include)
            return ('layer', owner) if owner else ('outside', include)
        return 'system', None


def check(layers, root):
    errors = []
    cycle = layers.cycle()
    if cycle:
        errors.append('layer dependencies form a cycle: ' + ' -> '.join(cycle))
    for name, layer in layers.by_name.items():
        for dep in layer['deps']:
            if dep not in layers.by_name:
                errors.append(f'{name}: declares a dependency on {dep}, which is not a layer')
    for layer in layers.by_name.values():
        allowed = layers.reachable(layer['name'])
        packages = set()
        for n in allowed:
            packages.update(layers.by_name[n]['external'])
        top = os.path.join(root, layer['dir'])
        for folder, dirs, files in os.walk(top):
            rel_folder = os.path.relpath(folder, root)
            # Nested layers are checked as themselves.
            dirs[:] = [d for d in dirs if layers.owner(os.path.join(rel_folder, d)) == layer['name']]
            for f in sorted(files):
                if not f.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(rel_folder, f)
                public = '/include/rill/' in '/' + path
                errors.extend(check_file(layers, root, path, layer, allowed, packages, public))
    return errors


def check_file(layers, root, path, layer, allowed, packages, public):
    errors = []
    with open(os.path.join(root, path), encoding='utf-8') as source:
        for number, line in enumerate(source, 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            quoted, include = match.group(1) == '"', match.group(2)
            kind, what = layers.resolve(include, quoted)
            where = f'{path}:{number}: {layer["name"]} includes "{include}"'
            if kind == 'layer' and what not in allowed:
                errors.append(f'{where}, of layer {what}, which {layer["name"]} does not depend on')
            elif kind == 'external' and what not in packages:
                errors.append(f'{where}, of {what}, which {layer["name"]} does not declare')
            elif kind == 'outside':
                errors.append(f'{where}, which is outside the library\'s layers')
            if public and kind == 'layer' and not include.startswith('rill/'):
                errors.append(f'{where}: a public header may include only <rill/...> headers')
            if public and kind == 'external' and what != 'Protobuf':
                errors.append(f'{where}: a public header may not include {what}')
    return errors


def main():
    args = sys.argv[1:]
    stamp = None
    if '--stamp' in args:
        i = args.index('--stamp')
        stamp = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    with open(args[0], encoding='utf-8') as f:
        table = json.load(f)
    root = os.path.abspath(args[1])
    errors = check(Layers(table, root), root)
    for e in errors:
        print(e)
    if errors:
        print(f'check_layers: {len(errors)} include(s) cross the declared layering')
        sys.exit(1)
    if stamp:
        with open(stamp, 'w', encoding='utf-8') as f:
            f.write('ok\n')


if __name__ == '__main__':
    main()
