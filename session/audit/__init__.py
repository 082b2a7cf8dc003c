"""`fuselens audit`: a model zoo fused and checked in one go, with reports and a CI gate (Qt-free).

model.py does one model; worker.py runs it in a process of its own; pool.py runs many (here or on Dask);
summary.py ranks the zoo's near-miss reasons (reasons.py classes them); baseline.py is the gate;
reports.py and html.py write JSON, JUnit XML and the page.
"""
