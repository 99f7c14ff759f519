//! Integration tests live in `tests/`; they run against a real local control plane.
