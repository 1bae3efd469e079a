// placeholder: cross_entropy tests
