"""Graph IR: Model / Graph / Node / ValueInfo built from the decoded proto, with opsets, subgraphs and functions."""
from .model import Graph, Model, Node, ValueInfo, load_model  # noqa: F401
