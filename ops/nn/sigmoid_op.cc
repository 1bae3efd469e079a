// placeholder: sigmoid
