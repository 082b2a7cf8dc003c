"""FuseLens: a desktop workbench for graph-fusion passes on TensorFlow models.

The one import package: `fuselens.core`, `.passes`, `.session`, `.cli`, `.gui` and `.main`. In a
source checkout they stay top-level folders (core/, passes/, ...) and this folder links to them, so
the checkout runs without an install (`python main.py`, `PYTHONPATH=$PWD pytest`) and static tools
(import-linter, editors) see the package; a wheel holds real copies. docs/architecture.md says more.
"""
