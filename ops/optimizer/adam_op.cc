// placeholder: adam
