// placeholder: tanh tests
