// placeholder: pool2d tests
