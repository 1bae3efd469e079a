// placeholder: reshape tests
