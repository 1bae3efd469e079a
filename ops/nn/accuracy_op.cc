// placeholder: accuracy
