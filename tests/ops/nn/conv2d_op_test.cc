// placeholder: conv2d tests
