// placeholder: mul tests
