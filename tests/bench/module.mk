# tests/bench — filled by its owner
