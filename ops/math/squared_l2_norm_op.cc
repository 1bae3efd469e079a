// placeholder: squared_l2_norm
