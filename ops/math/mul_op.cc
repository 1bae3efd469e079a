// placeholder: mul
