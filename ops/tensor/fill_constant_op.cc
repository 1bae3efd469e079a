// placeholder: fill_constant
