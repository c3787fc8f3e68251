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


def get_value(x):
    """The value of x (an optimizer's learning_rate, or any number or
    array) as a float or NumPy value."""
    return x.numpy() if hasattr(x, "numpy") else x


def set_value(x, value):
    """Assigns value to x, an optimizer's learning_rate (model.optimizer.lr
    or .learning_rate), which the compiled model then trains with."""
    if not hasattr(x, "assign"):
        raise TypeError("set_value: %s cannot be assigned; give an "
                        "optimizer's learning_rate" % type(x).__name__)
    x.assign(value)
