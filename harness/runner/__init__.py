"""Benchmark configs and the runner behind `harness run`."""
