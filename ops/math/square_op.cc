// placeholder: square
