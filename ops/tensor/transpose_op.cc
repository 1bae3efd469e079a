// placeholder: transpose
