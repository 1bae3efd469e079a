// placeholder: reshape
