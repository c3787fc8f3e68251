"""tf.keras.backend's settings that Keras programs set."""

_format = "channels_last"


def set_image_data_format(data_format):
    """Only 'channels_last' (NHWC) is supported, as Keras' default."""
    global _format
    if data_format != "channels_last":
        raise ValueError("Tessera's layers are channels_last (NHWC); got %r"
                         % (data_format,))
    _format = data_format


def image_data_format():
    return _format


def clear_session():
    """Nothing to clear: each model owns its compiled programs."""


def floatx():
    return "float32"
