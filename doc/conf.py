"""Sphinx configuration of the clarytree documentation."""

import importlib.util
import os
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

HERE = Path(__file__).parent
# ``python -m sphinx`` run from the repository root would import the source
# tree (without its compiled extensions): document the installed package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE.parent.resolve()]

import clarytree  # noqa: E402

project = "clarytree"
author = "clarytree developers"
copyright = "2026, clarytree developers"
release = clarytree.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.doctest",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "**.ipynb_checkpoints", "examples/README.txt"]
default_role = "literal"
nitpicky = False

autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = f"clarytree {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path = ["_static"]
html_css_files = ["clarytree.css"]
html_js_files = ["enlarge.js"]

# MBNDT needs torch to fit; its documentation is built only when it imports.
HAVE_MBNDT = (importlib.util.find_spec("torch") is not None
              and importlib.util.find_spec("clarytree.mbndt") is not None)


def _write_mbndt_api():
    """Generate the MBNDT API page for this build (a note when it cannot import)."""
    target = HERE / "api_mbndt.rst"
    title = "clarytree.mbndt: MBNDT multi-branch trees\n" + "=" * 41 + "\n\n"
    if HAVE_MBNDT:
        text = title + (
            ".. automodule:: clarytree.mbndt\n"
            "   :no-members:\n\n"
            ".. currentmodule:: clarytree.mbndt\n\n"
            "Estimators\n----------\n\n"
            ".. autosummary::\n"
            "   :toctree: generated/\n\n"
            "   MBNDTClassifier\n"
            "   MBNDTRegressor\n\n"
            "Export\n------\n\n"
            "``clarytree.mbndt.export_text`` is :func:`clarytree.export_text`; "
            ":func:`~clarytree.leaf_table`, :func:`~clarytree.to_dict`, "
            ":func:`~clarytree.from_dict`, :func:`~clarytree.export_graphviz` and "
            ":func:`~clarytree.plot_tree` take fitted MBNDT estimators too.\n"
        )
    else:
        text = title + (
            "``clarytree.mbndt`` could not be imported when this page was built "
            "(it needs PyTorch); see its docstrings.\n"
        )
    if not target.exists() or target.read_text() != text:
        target.write_text(text)


_write_mbndt_api()

sphinx_gallery_conf = {
    "examples_dirs": ["examples"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py" if HAVE_MBNDT else r"(__init__\.py|plot_mbndt)",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "show_memory": False,
    "plot_gallery": "True",
    "abort_on_example_error": True,
    # A second, double-resolution file per figure: sharp when opened full size.
    "image_srcset": ["2x"],
}

os.environ.setdefault("MPLBACKEND", "Agg")
warnings.filterwarnings("ignore", message="Matplotlib is currently using agg")
