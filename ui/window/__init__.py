"""The main window's controllers: small objects the window owns, one for each thing it does.

:class:`~ui.main_window.MainWindow` builds the widgets and the models; these do the work:
``commands`` (menus, actions, the palette), ``docks`` (the inspector docks), ``status`` (the
status bar and the window title), ``robots`` (the robot picker and the model line), ``threads``
(the thread list, switching, showing a stored thread), ``runs`` (sending, stopping, editing,
branches, approvals, the bridge's events), ``settings_flow`` (Settings, theme, About, the
database banner), ``folder_flow`` (the open folder and its trust) and ``transfer`` (export and
import). Each gets the window and reaches the widgets and its siblings through it.
"""
