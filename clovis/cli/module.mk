# clovis/cli — filled by its owner
