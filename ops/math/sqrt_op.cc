// placeholder: sqrt
