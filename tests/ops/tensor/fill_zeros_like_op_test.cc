// placeholder: fill_zeros_like tests
