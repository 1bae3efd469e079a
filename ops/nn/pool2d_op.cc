// placeholder: pool2d
