// placeholder: sum
