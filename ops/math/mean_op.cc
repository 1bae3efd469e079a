// placeholder: mean
