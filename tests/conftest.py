"""Puts py_engine/ and tests/ on sys.path so the suites run from a plain checkout too."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "py_engine"))
sys.path.insert(0, HERE)
