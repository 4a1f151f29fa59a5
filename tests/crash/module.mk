# tests/crash — filled by its owner
