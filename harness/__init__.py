"""harness: a TREC-style evaluation harness for conversational search and recommendation."""

__version__ = "0.1.0"
