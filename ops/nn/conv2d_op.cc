// placeholder: conv2d
