"""Build hook for the optional C extension; all metadata is in setup.cfg.

``k3doctor.explain._litscan`` (stage 1 of ``explain --log`` in C, k3doctor/explain/literal_scan.py)
is built where a C compiler and the Python headers are present. It is optional: without them the
install goes on with a warning and ``explain`` uses its pure-Python prefilter (the same answers,
slower on large logs).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("k3doctor.explain._litscan", ["k3doctor/explain/_litscan.c"], optional=True)])
