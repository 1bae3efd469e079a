// placeholder: split
