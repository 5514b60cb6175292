"""The main window's parts: small objects the window owns, one for each thing it does.

:class:`~ui.main_window.MainWindow` builds the widgets and the models; these do the work:
``commands`` (the action registry, the menus, the palette), ``docks`` (the docks, declared in
``DOCKS``), ``status`` (the status bar and the window title), ``robots`` (the robot picker and the
model line), ``models`` (the thread's model picker), ``threads`` (the thread list, switching,
showing a stored thread), ``runs`` (sending, stopping, editing, branches, approvals, the bridge's
events to the chat), ``asked`` (an approval goes to the chat with its run's event that asks it),
``settings_flow`` (Settings, theme, About, the database banner), ``folder_flow`` (the open folder and
its trust), ``transfer`` (export and import), ``notify`` (desktop notifications), ``attachments``, ``slash`` (the composer's / commands), ``geometry``
(the window's size and layout) and ``change_cards`` (the chat's change cards follow the Changes
dock). Each gets the typed services (:class:`ui.services.Services`) and the widgets it works on,
never the window; what one part tells another goes through its signals, connected in
``MainWindow._wire``.
"""
