// placeholder: tanh
