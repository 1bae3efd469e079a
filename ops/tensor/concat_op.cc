// placeholder: concat
