// placeholder: fill_constant tests
