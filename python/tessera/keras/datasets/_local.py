"""Finding local copies of data sets."""

import os

from ... import _tessera


def directories():
    dirs = []
    if os.environ.get("TESSERA_DATASETS_DIR"):
        dirs.append(os.environ["TESSERA_DATASETS_DIR"])
    dirs.append(os.path.join(os.path.expanduser("~"), ".keras", "datasets"))
    return dirs


def find(*names):
    """The first existing path named `names` under the search folders."""
    for d in directories():
        p = os.path.join(d, *names)
        if os.path.exists(p):
            return p
    return None


def idx_file(folder, stem):
    for name in (stem + ".gz", stem):
        p = os.path.join(folder, name)
        if os.path.exists(p):
            return p
    return None


def read_idx_set(folder):
    """((x_train, y_train), (x_test, y_test)) from the four IDX files in
    `folder`, or None when one is missing."""
    stems = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
    paths = [idx_file(folder, s) for s in stems]
    if None in paths:
        return None
    a = [_tessera.read_idx(p) for p in paths]
    return (a[0], a[1]), (a[2], a[3])


def missing(name, what):
    return FileNotFoundError(
        "%s.load_data: no local copy found (Tessera does not download); put "
        "%s in $TESSERA_DATASETS_DIR or %s"
        % (name, what, os.path.join("~", ".keras", "datasets")))
