// placeholder: dropout
