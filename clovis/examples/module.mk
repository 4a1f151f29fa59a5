# clovis/examples — filled by its owner
