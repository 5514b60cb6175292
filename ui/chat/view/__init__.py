"""The chat's widgets: they render :mod:`ui.chat.model`'s state, told what changed by its listener."""
